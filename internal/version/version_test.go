package version

import (
	"encoding/json"
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	vcs := func(rev, modified, time string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: time},
			{Key: "vcs.modified", Value: modified},
		}
	}
	const rev = "4e90a2f0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6"
	tests := []struct {
		name    string
		bi      *debug.BuildInfo
		stamped string // -X ...version.stamped
		text    string
		json    string
	}{
		{
			name: "tagged release",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulksend/bulksend", Version: "v1.4.0"},
				Settings: vcs(rev, "false", "2026-11-30T23:23:00Z")},
			text: "bulksend v1.4.0 (4e90a2f0c1d2, 2026-11-30T23:23:00Z, go1.26.8)",
			json: `{"version":"v1.4.0","revision":"` + rev + `","modified":false,"time":"2026-11-30T23:23:00Z","go":"go1.26.8"}`,
		},
		{
			name: "dirty checkout",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulksend/bulksend", Version: "(devel)"},
				Settings: vcs(rev, "true", "2026-11-30T23:23:00Z")},
			text: "bulksend (devel) (4e90a2f0c1d2-dirty, 2026-11-30T23:23:00Z, go1.26.8)",
			json: `{"version":"(devel)","revision":"` + rev + `","modified":true,"time":"2026-11-30T23:23:00Z","go":"go1.26.8"}`,
		},
		{
			name: "no vcs info (go test, -buildvcs=false)",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulksend/bulksend", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-race", Value: "true"}}},
			text: "bulksend (devel) (go1.26.8)",
			json: `{"version":"(devel)","revision":"","modified":false,"time":"","go":"go1.26.8"}`,
		},
		{
			name: "stamped by the release build (-buildvcs=false: no revision)",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulksend/bulksend", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}}},
			stamped: "v1.5.0",
			text:    "bulksend v1.5.0 (go1.26.8)",
			json:    `{"version":"v1.5.0","revision":"","modified":false,"time":"","go":"go1.26.8"}`,
		},
		{
			name:    "stamped wins over the recorded module version",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulksend/bulksend", Version: "v0.0.0-20261201095000-2bfaa7a1b2c3"}},
			stamped: "v0.0.0-SNAPSHOT-2bfaa7a",
			text:    "bulksend v0.0.0-SNAPSHOT-2bfaa7a (go1.26.8)",
			json:    `{"version":"v0.0.0-SNAPSHOT-2bfaa7a","revision":"","modified":false,"time":"","go":"go1.26.8"}`,
		},
		{
			name: "nil build info",
			bi:   nil,
			text: "bulksend unknown",
			json: `{"version":"unknown","revision":"","modified":false,"time":"","go":""}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Of(tt.bi, tt.stamped)
			if got := v.String(); got != tt.text {
				t.Errorf("text:\n got %s\nwant %s", got, tt.text)
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("json:\n got %s\nwant %s", b, tt.json)
			}
		})
	}
}
