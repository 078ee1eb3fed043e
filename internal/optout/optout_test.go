package optout

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Kind
	}{
		// The FCC's words, alone, in any case and with punctuation.
		{"STOP", Stop}, {"stop", Stop}, {" Stop. ", Stop}, {"STOP!!!", Stop},
		{"quit", Stop}, {"End", Stop}, {"REVOKE", Stop}, {"opt out", Stop}, {"Opt-Out", Stop},
		{"OPTOUT", Stop}, {"cancel", Stop}, {"Unsubscribe", Stop},
		// AWS's besides.
		{"ARRET", Stop}, {"remove", Stop}, {"TD", Stop},
		// Other languages, accents or not.
		{"Arrêt", Stop}, {"désabonner", Stop}, {"DESABONNER", Stop}, {"PARAR", Stop}, {"Baja", Stop},
		{"darme de baja", Stop}, {"Stopp", Stop}, {"abmelden", Stop}, {"basta", Stop},
		// With a few words of courtesy.
		{"stop please", Stop}, {"Please STOP", Stop}, {"unsubscribe me now", Stop},
		{"stop, thank you", Stop}, {"STOP texting me", Stop}, {"parar por favor", Stop},
		{"stop all", Stop},
		// Longer texts that only contain one are replies, not revocations.
		{"can you stop by tomorrow?", None}, {"cancel my order", None},
		{"please please please please stop", None}, // more courtesy than a keyword carries
		{"What time do you open?", None}, {"Thanks!", None}, {"thank you", None},
		{"stopping by later", None}, {"", None}, {"   ", None}, {"!!!", None},
		{"👍", None},
		// Start and help.
		{"START", Start}, {"unstop", Start}, {"Start please", Start},
		{"HELP", Help}, {"help me", Help}, {"info", Help}, {"Ayuda", Help},
	} {
		if got := Classify(tc.text); got != tc.want {
			t.Errorf("Classify(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestExtraKeywords(t *testing.T) {
	k := New([]string{"NOMORE", "Hör auf"}, []string{"RESUME"})
	for _, tc := range []struct {
		text string
		want Kind
	}{
		{"nomore", Stop}, {"NO-MORE", None}, {"hör auf!", Stop}, {"HOR AUF", Stop},
		{"resume", Start}, {"stop", Stop}, {"start", Start},
	} {
		if got := k.Classify(tc.text); got != tc.want {
			t.Errorf("Classify(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if Classify("nomore") != None {
		t.Error("an extra keyword leaked into the defaults")
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"  Opt-Out!! ": "opt out", "OPT OUT": "opt out", "Arrêt": "arret", "ÀÉÎÕÜ": "aeiou",
		"a\tb\n c": "a b c", "": "", "...": "", "stop2": "stop2",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"STOP", "stop please", "Arrêt", "darme de baja", "cancel my order", "\xff\xfe", strings.Repeat("stop ", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := Classify(s)
		if k > Help {
			t.Fatalf("Classify(%q) = %d", s, k)
		}
		n := Normalize(s)
		if utf8.ValidString(s) && Normalize(n) != n {
			t.Fatalf("Normalize is not idempotent on %q: %q then %q", s, n, Normalize(n))
		}
		// Case never changes the answer (of ASCII text: upper-casing
		// some letters changes their number, ß to SS).
		if ascii(s) && Classify(strings.ToUpper(s)) != k {
			t.Fatalf("Classify(%q) = %v but Classify(upper) = %v", s, k, Classify(strings.ToUpper(s)))
		}
	})
}

func TestOfText(t *testing.T) {
	for _, tc := range []struct {
		text   string
		want   Action
		source string
	}{
		{"STOP", StopAll, "reply STOP"}, {"Arrêt", StopAll, "reply Arrêt"}, {"START", LiftAll, "reply START"},
		{"help", Keep, ""}, {"thanks", Keep, ""},
	} {
		a, src := Default.OfText(tc.text)
		if a != tc.want || src != tc.source {
			t.Errorf("OfText(%q) = %v %q, want %v %q", tc.text, a, src, tc.want, tc.source)
		}
	}
	for label, want := range map[string]bool{"Stop promotions": true, "Parar promoções": true, "STOP PROMOTIONS": true, "Arrêter les promotions": true, "Stop": false, "Track order": false} {
		if IsStopPromotions(label) != want {
			t.Errorf("IsStopPromotions(%q) = %v", label, !want)
		}
	}
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
