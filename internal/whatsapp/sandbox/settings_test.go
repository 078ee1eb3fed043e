package sandbox_test

import (
	"errors"
	"testing"

	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// The settings given as text, and the rates: what the sandbox cannot take
// is a SettingError naming the setting and its text.
func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		specs   sandbox.Specs
		cfg     sandbox.Config
		setting string // "": taken
		value   string
		is      error
	}{
		{name: "specs", specs: sandbox.Specs{Templates: []string{"spring_sale:2:en_US"}, Numbers: []string{"1:health=BLOCKED"}, NumberRates: []string{"1=1000"}}},
		{name: "a template without its count", specs: sandbox.Specs{Templates: []string{"spring_sale"}}, setting: "template", value: `"spring_sale"`},
		{name: "a number's unknown key", specs: sandbox.Specs{Numbers: []string{"1:colour=red"}}, setting: "number", value: `"1:colour=red"`, is: sandbox.ErrNumberKey},
		{name: "a number without a key", specs: sandbox.Specs{Numbers: []string{"1"}}, setting: "number", value: `"1"`},
		{name: "a number rate that is not a number", specs: sandbox.Specs{NumberRates: []string{"1=fast"}}, setting: "number-rate", value: `"1=fast"`},
		{name: "a number rate without its ID", specs: sandbox.Specs{NumberRates: []string{"1000"}}, setting: "number-rate", value: `"1000"`},
		{name: "a rate above 1", cfg: sandbox.Config{ReadRate: 1.5}, setting: "read-rate", value: "1.5", is: sandbox.ErrNotFraction},
		{name: "a negative rate", cfg: sandbox.Config{HeldFailRate: -0.1}, setting: "held-fail-rate", value: "-0.1", is: sandbox.ErrNotFraction},
		{name: "rates at their bounds", cfg: sandbox.Config{ReadRate: 1, FailRate: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			err := c.Apply(tc.specs)
			if err == nil {
				err = c.Validate()
			}
			if tc.setting == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var se *sandbox.SettingError
			if !errors.As(err, &se) || se.Setting != tc.setting || se.Value != tc.value || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %#v, want a SettingError of %s %s (%v)", err, tc.setting, tc.value, tc.is)
			}
		})
	}
	c := sandbox.Config{}
	if err := c.Apply(sandbox.Specs{Templates: []string{"a:1"}, Numbers: []string{"7:throughput=high"}, NumberRates: []string{"7=2.5"}}); err != nil ||
		len(c.Templates) != 1 || c.Numbers["7"].Throughput != "HIGH" || c.Rates["7"] != 2.5 {
		t.Errorf("Apply = %v: templates %v, numbers %v, rates %v", err, c.Templates, c.Numbers, c.Rates)
	}
}
