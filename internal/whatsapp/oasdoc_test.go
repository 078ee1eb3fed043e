package whatsapp

import (
	"os"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

var oasDoc struct {
	once sync.Once
	doc  map[string]any
	err  error
}

// loadYAML parses Meta's OpenAPI document at path into maps, once, so that
// tests can follow its paths to the schemas and examples they name
// (package oas validates against schemas but does not walk paths).
func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	oasDoc.once.Do(func() {
		b, err := os.ReadFile(path)
		if err != nil {
			oasDoc.err = err
			return
		}
		oasDoc.err = yaml.Unmarshal(b, &oasDoc.doc)
	})
	if oasDoc.err != nil {
		t.Fatalf("read %s: %v", path, oasDoc.err)
	}
	return oasDoc.doc
}

// dig follows keys down nested maps; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
