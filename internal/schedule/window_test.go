package schedule

import (
	"slices"
	"strings"
	"testing"
)

func mustWindow(t testing.TB, specs ...string) Window {
	t.Helper()
	w, err := ParseWindow(specs)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestParseWindow(t *testing.T) {
	tests := []struct {
		name  string
		specs []string
		want  string
	}{
		{"every day", []string{"09:00-20:00"}, "09:00-20:00"},
		{"days and a day", []string{"mon-fri 09:00-20:00", "sat 10:00-18:00"}, "mon-fri 09:00-20:00; sat 10:00-18:00"},
		{"ordered by first day", []string{"sat 10:00-18:00", "mon-fri 09:00-20:00"}, "mon-fri 09:00-20:00; sat 10:00-18:00"},
		{"case and spaces", []string{"  MON-Fri   09:00-20:00 "}, "mon-fri 09:00-20:00"},
		{"full names and one-digit hours", []string{"monday 9:00-17:00"}, "mon 09:00-17:00"},
		{"list", []string{"mon,wed,fri 09:00-17:00"}, "mon,wed,fri 09:00-17:00"},
		{"list with a range", []string{"mon,wed-fri 09:00-17:00"}, "mon,wed-fri 09:00-17:00"},
		{"days wrap", []string{"fri-mon 10:00-12:00"}, "fri-mon 10:00-12:00"},
		{"a wrapping range of seven days is every day", []string{"tue-mon 10:00-12:00"}, "10:00-12:00"},
		{"mon-sun is every day", []string{"mon-sun 10:00-12:00"}, "10:00-12:00"},
		{"a day twice", []string{"mon,mon 09:00-10:00"}, "mon 09:00-10:00"},
		{"sunday", []string{"sun 12:00-21:00"}, "sun 12:00-21:00"},
		{"crosses midnight", []string{"fri 22:00-02:00"}, "fri 22:00-02:00"},
		{"crosses the week's end", []string{"sun 22:00-02:00"}, "sun 22:00-02:00"},
		{"every night", []string{"22:00-06:00"}, "22:00-06:00"},
		{"to 24:00", []string{"sat 18:00-24:00"}, "sat 18:00-24:00"},
		{"to midnight written 00:00", []string{"sat 18:00-00:00"}, "sat 18:00-24:00"},
		{"whole day", []string{"00:00-24:00"}, "00:00-24:00"},
		{"two whole days", []string{"mon 00:00-24:00", "tue 00:00-24:00"}, "mon-tue 00:00-24:00"},
		{"overlapping ranges merge", []string{"mon 09:00-12:00", "mon 11:00-14:00"}, "mon 09:00-14:00"},
		{"touching ranges merge", []string{"mon 09:00-12:00", "mon 12:00-14:00"}, "mon 09:00-14:00"},
		{"a day's end and the next day's start join", []string{"mon 22:00-24:00", "tue 00:00-02:00"}, "mon 22:00-02:00"},
		{"no join when it would not read as one range", []string{"sat 10:00-24:00", "sun 00:00-10:00"}, "sat 10:00-24:00; sun 00:00-10:00"},
		{"longer than a day", []string{"fri 22:00-24:00", "sat 00:00-24:00", "sun 00:00-03:00"}, "fri 22:00-24:00; sat 00:00-24:00; sun 00:00-03:00"},
		{"a range inside another", []string{"09:00-20:00", "wed 10:00-11:00"}, "09:00-20:00"},
		{"the Texas rule", []string{"mon-sat 09:00-21:00", "sun 12:00-21:00"}, "mon-sat 09:00-21:00; sun 12:00-21:00"},
		{"none", nil, ""},
		{"blank specs are skipped", []string{"", "  "}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWindow(t, tt.specs...)
			if got := w.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if w.IsZero() != (tt.want == "") {
				t.Errorf("IsZero() = %v", w.IsZero())
			}
			back := mustWindow(t, strings.Split(w.String(), "; ")...)
			if !slices.Equal(back.spans, w.spans) {
				t.Errorf("ParseWindow(String()) = %v, want %v", back.spans, w.spans)
			}
			if !slices.Equal(w.Specs(), strings.Split(tt.want, "; ")) && tt.want != "" {
				t.Errorf("Specs() = %q", w.Specs())
			}
		})
	}
}

func TestParseWindowErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string // in the error, after the spec
	}{
		{"unknown day", "mon-fry 09:00-20:00", `unknown day "fry"`},
		{"unknown day in a list", "mon,xyz 09:00-20:00", `unknown day "xyz"`},
		{"same day range", "mon-mon 09:00-10:00", "starts and ends on the same day"},
		{"no minutes", "mon 9-17", `time "9"`},
		{"hour 25", "mon 09:00-25:00", `time "25:00"`},
		{"minute 60", "09:60-10:00", `time "09:60"`},
		{"24:30", "09:00-24:30", `time "24:30"`},
		{"three-digit hour", "009:00-10:00", `time "009:00"`},
		{"signs", "+9:00-10:00", `time "+9:00"`},
		{"start at 24:00", "24:00-02:00", "24:00 can only end a range"},
		{"empty range", "mon 09:00-09:00", "is empty"},
		{"empty range at midnight", "00:00-24:00x", `time "24:00x"`},
		{"days without hours", "mon-fri", "days but no hours"},
		{"hours without a dash", "09:00", `hours "09:00"`},
		{"a second dash", "09:00-10:00-11:00", `time "10:00-11:00"`},
		{"too many fields", "mon fri 09:00-10:00", `want "HH:MM-HH:MM" or "DAYS HH:MM-HH:MM"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWindow([]string{"sat 10:00-18:00", tt.spec})
			if err == nil {
				t.Fatalf("ParseWindow(%q) gave no error", tt.spec)
			}
			if prefix := `window "` + tt.spec + `": `; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	federal := QuietRules("+12125550123")[0]
	texas := QuietRules("+12145550123")[1]
	tests := []struct {
		name   string
		rule   QuietRule
		window Window
		want   bool
	}{
		{"inside", federal, mustWindow(t, "mon-fri 09:00-20:00"), true},
		{"the same", federal, mustWindow(t, "08:00-21:00"), true},
		{"starts early", federal, mustWindow(t, "07:30-20:00"), false},
		{"ends late on one day", federal, mustWindow(t, "09:00-20:00", "fri 20:00-21:30"), false},
		{"crosses midnight", federal, mustWindow(t, "fri 20:00-02:00"), false},
		{"always open", federal, Window{}, false},
		{"a rule of every hour", QuietRule{}, mustWindow(t, "00:00-24:00"), true},
		{"texas weekdays", texas, mustWindow(t, "mon-sat 09:00-21:00"), true},
		{"texas every day from nine", texas, mustWindow(t, "09:00-21:00"), false},
		{"texas sunday afternoon", texas, mustWindow(t, "sun 12:00-18:00"), true},
		{"texas sunday morning", texas, mustWindow(t, "sun 11:00-18:00"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Within(tt.window); got != tt.want {
				t.Errorf("%s.Within(%q) = %v, want %v", tt.rule.Market, tt.window, got, tt.want)
			}
		})
	}
}
