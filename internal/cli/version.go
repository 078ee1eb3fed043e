package cli

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

type versionOptions struct {
	json bool
}

func newVersionCmd(ios *IO) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print bulksend's version, source revision and Go version",
		Long: `Version prints the module version (the release tag; a pseudo-version for an
untagged checkout; "(devel)" when the build recorded no VCS information), the
source revision it was built from ("-dirty" when the tree had uncommitted
changes), that revision's commit time and the Go version. Parts the build did
not record are left out. A release binary shows the version its release build
stamped in. 'bulksend --version' prints the same line. With --json it prints
one object; its fields are only ever added to.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(ios, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object on stdout")
	return cmd
}

// version is the release version, stamped by the release build with
// -ldflags "-X github.com/bulksend/bulksend/internal/cli.version=v1.2.3"
// (see .goreleaser.yaml). Empty in any other build: the version is then
// the module version the toolchain recorded, if any.
var version string

// currentVersion is this binary's version, for 'version', --version and
// the campaign's run history.
func currentVersion() buildVersion {
	bi, _ := debug.ReadBuildInfo() // nil, false only without module support
	return versionOf(bi, version)
}

func runVersion(ios *IO, o *versionOptions) error {
	v := currentVersion()
	if o.json {
		if err := json.NewEncoder(ios.Out).Encode(v); err != nil {
			return fmt.Errorf("version: %w", err)
		}
		return nil
	}
	if _, err := fmt.Fprintln(ios.Out, v); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	return nil
}

// buildVersion is what the build recorded about itself. Every JSON field is
// always present (empty when not recorded) so that scripts need no checks.
type buildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision"` // in full; the text form shortens it
	Modified bool   `json:"modified"`
	Time     string `json:"time"`
	Go       string `json:"go"`
}

// unknownVersion stands in for a missing module version so that the
// version is always the line's second word.
const unknownVersion = "unknown"

// versionOf reads bi, which may be nil; stamped, when not empty, is the
// version instead of the module version in bi.
func versionOf(bi *debug.BuildInfo, stamped string) buildVersion {
	v := buildVersion{Version: unknownVersion}
	if stamped != "" {
		v.Version = stamped
	}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" && stamped == "" {
		v.Version = bi.Main.Version
	}
	v.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.Time = s.Value // already RFC 3339, in UTC
		}
	}
	return v
}

// String is the one-line form: "bulksend VERSION (REV[-dirty], TIME, GO)",
// leaving out the parts not recorded, and the parentheses if none is.
func (v buildVersion) String() string {
	var parts []string
	if v.Revision != "" {
		rev := v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			rev += "-dirty"
		}
		parts = append(parts, rev)
	}
	for _, p := range []string{v.Time, v.Go} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := "bulksend " + v.Version
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}
