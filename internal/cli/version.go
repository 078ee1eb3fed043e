package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/version"
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

func runVersion(ios *IO, o *versionOptions) error {
	v := version.Current()
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
