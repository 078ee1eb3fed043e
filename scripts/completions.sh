#!/bin/sh
# Shell completion scripts for the release archives, written by the binary
# itself (cobra's 'bulksend completion SHELL'). goreleaser's before hook.
set -e
rm -rf completions
mkdir completions
for sh in bash zsh fish; do
	go run ./cmd/bulksend completion "$sh" >"completions/bulksend.$sh"
done
