package template_test

import (
	"testing"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// BenchmarkValidateRow is the per-row cost Meta's rules add to an import:
// four parameter columns of a marketing template.
func BenchmarkValidateRow(b *testing.B) {
	m, err := template.New(template.Input{Columns: []string{"name", "code", "header.image", "button.0.url"}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cells := []string{"Customer 123456", "CODE0123456", "https://cdn.example.com/img/12.jpg", "c0123456"}
	for b.Loop() {
		if m.Validate(cells) != "" {
			b.Fatal("invalid")
		}
	}
}
