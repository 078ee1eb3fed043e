package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SettingError is a setting of the sandbox it cannot take. Setting is its
// name as the command line's flag has it (the front end names the flag),
// Value its text as given.
type SettingError struct {
	Setting, Value string
	Err            error // why; nil when the text says it
}

func (e *SettingError) Error() string {
	if e.Err == nil {
		return "invalid " + e.Setting + " " + e.Value
	}
	return fmt.Sprintf("invalid %s %s: %v", e.Setting, e.Value, e.Err)
}
func (e *SettingError) Unwrap() error { return e.Err }

// ErrNotFraction is a rate of Config that is not a fraction.
var ErrNotFraction = errors.New("want a fraction from 0 to 1")

// Specs are the settings of a Config given as text, one value each.
type Specs struct {
	Templates   []string // NAME:BODY_PARAMS[:LANG,LANG…] (ParseTemplate)
	Numbers     []string // ID:KEY=VALUE (SetNumber)
	NumberRates []string // ID=N: Config.Rates
}

// Apply adds specs to c; an error is a *SettingError naming the spec at
// fault ("template", "number", "number-rate").
func (c *Config) Apply(specs Specs) error {
	for _, t := range specs.Templates {
		tpl, err := ParseTemplate(t)
		if err != nil {
			return &SettingError{Setting: "template", Value: strconv.Quote(t), Err: err}
		}
		c.Templates = append(c.Templates, tpl)
	}
	for _, spec := range specs.Numbers {
		if c.Numbers == nil {
			c.Numbers = map[string]NumberInfo{}
		}
		if err := SetNumber(c.Numbers, spec); err != nil {
			return &SettingError{Setting: "number", Value: strconv.Quote(spec), Err: err}
		}
	}
	for _, r := range specs.NumberRates {
		id, v, ok := strings.Cut(r, "=")
		n, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return &SettingError{Setting: "number-rate", Value: strconv.Quote(r)}
		}
		if c.Rates == nil {
			c.Rates = map[string]float64{}
		}
		c.Rates[id] = n
	}
	return nil
}

// Validate refuses a rate of c that is not a fraction: a *SettingError
// naming it (ErrNotFraction).
func (c Config) Validate() error {
	for _, r := range []struct {
		setting string
		v       float64
	}{{"transient-rate", c.TransientRate}, {"permanent-rate", c.PermanentRate}, {"late-rate", c.LateRate}, {"fail-rate", c.FailRate}, {"read-rate", c.ReadRate}, {"duplicate-rate", c.DuplicateRate}, {"reorder-rate", c.ReorderRate},
		{"reply-rate", c.ReplyRate}, {"stop-rate", c.StopRate}, {"button-rate", c.ButtonRate},
		{"stop-promotions-rate", c.StopPromotionsRate}, {"preference-stop-rate", c.PreferenceStopRate},
		{"held-rate", c.HeldRate}, {"held-fail-rate", c.HeldFailRate}, {"marketing-cap-rate", c.MarketingCapRate}} {
		if r.v < 0 || r.v > 1 {
			return &SettingError{Setting: r.setting, Value: fmt.Sprint(r.v), Err: ErrNotFraction}
		}
	}
	return nil
}
