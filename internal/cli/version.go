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
not record are left out. With --json it prints one object; its fields are only
ever added to.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(ios, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object on stdout")
	return cmd
}

func runVersion(ios *IO, o *versionOptions) error {
	bi, _ := debug.ReadBuildInfo() // nil, false only without module support
	v := versionOf(bi)
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

// versionOf reads bi, which may be nil.
func versionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: unknownVersion}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
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
