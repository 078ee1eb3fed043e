// Package version is what this binary's build recorded about itself: the
// release version the release build stamps in (see .goreleaser.yaml), else
// the module version, the source revision, its time and the Go version.
package version

import (
	"runtime/debug"
	"strings"
)

// stamped is the release version, stamped by the release build with
// -ldflags "-X github.com/bulksend/bulksend/internal/version.stamped=v1.2.3".
// Empty in any other build: the version is then the module version the
// toolchain recorded, if any.
var stamped string

// Current is this binary's version, for bulksend version, --version and
// the campaign's run history.
func Current() Build {
	bi, _ := debug.ReadBuildInfo() // nil, false only without module support
	return Of(bi, stamped)
}

// Build is what the build recorded about itself. Every JSON field is
// always present (empty when not recorded) so that scripts need no checks.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision"` // in full; the text form shortens it
	Modified bool   `json:"modified"`
	Time     string `json:"time"`
	Go       string `json:"go"`
}

// unknownVersion stands in for a missing module version so that the
// version is always the line's second word.
const unknownVersion = "unknown"

// Of reads bi, which may be nil; stamped, when not empty, is the
// version instead of the module version in bi.
func Of(bi *debug.BuildInfo, stamped string) Build {
	v := Build{Version: unknownVersion}
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
func (v Build) String() string {
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
