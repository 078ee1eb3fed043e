// Command bulksend runs bulk WhatsApp template-message campaigns.
package main

import (
	"os"

	"github.com/bulksend/bulksend/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
