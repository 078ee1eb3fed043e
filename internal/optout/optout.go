// Package optout tells what a recipient's reply asks for: to stop every
// message (a stop keyword), to start again, or help.
//
// A reply is a keyword when, with case, accents and punctuation set aside,
// it is the keyword alone or the keyword among a few words of courtesy
// ("Stop please", "STOP!!", "unsubscribe me now"). A longer text that only
// contains one ("can you stop by tomorrow?", "cancel my order") is not: the
// FCC counts the listed words sent on their own as revocations, and a
// sender may ask a longer text what it meant instead of guessing.
package optout

import (
	"strings"
	"unicode"
)

// Kind is what a reply asks for.
type Kind uint8

const (
	None  Kind = iota // an ordinary reply
	Stop              // stop every message from this business
	Start             // messages may come again (lifts a Stop)
	Help              // the recipient asks for help (recorded, changes nothing)
)

func (k Kind) String() string {
	switch k {
	case Stop:
		return "stop"
	case Start:
		return "start"
	case Help:
		return "help"
	}
	return "none"
}

// The keywords of the FCC's 2025 revocation rule (STOP, QUIT, END, REVOKE,
// OPT OUT, CANCEL, UNSUBSCRIBE), AWS End User Messaging's default opt-out
// keywords (ARRET, OPTOUT, REMOVE, TD besides), and their common forms in
// the languages campaigns are sent in most.
var (
	defaultStop = []string{
		"stop", "quit", "end", "revoke", "opt out", "optout", "cancel", "unsubscribe", "remove", "td",
		"stop all", "stopall", "arret", "arrêt", "désabonner", "desabonner", "désinscrire", // fr
		"parar", "para", "alto", "baja", "cancelar", "darme de baja", // es
		"sair", "descadastrar", // pt
		"stopp", "abmelden", "abbestellen", // de
		"basta", "disiscriviti", // it
		"afmelden", // nl
	}
	defaultStart = []string{"start", "unstop", "subscribe", "yes start", "iniciar", "comenzar", "démarrer", "demarrer"}
	defaultHelp  = []string{"help", "info", "aide", "ayuda", "ajuda", "hilfe", "aiuto"}

	// courtesy are the words a keyword may come with and stay a keyword.
	courtesy = set("please", "pls", "plz", "me", "now", "it", "all", "thanks", "thank", "you", "thx",
		"texting", "messaging", "messages", "message", "texts", "sending", "por", "favor", "merci", "bitte", "obrigado", "gracias")
)

// maxCourtesy is how many courtesy words a keyword may come with.
const maxCourtesy = 3

// Keywords are the lists a reply is matched against.
type Keywords struct {
	stop, start, help map[string]bool
}

// Default is the FCC's and AWS's keywords and their common translations.
var Default = New(nil, nil)

// New returns the default keywords with extra stop and start keywords
// (an operator's own language, a brand's "NOMORE"). Each is matched as
// the defaults are: case, accents and punctuation set aside.
func New(extraStop, extraStart []string) Keywords {
	k := Keywords{stop: map[string]bool{}, start: map[string]bool{}, help: map[string]bool{}}
	for _, w := range append(append([]string(nil), defaultStop...), extraStop...) {
		k.stop[Normalize(w)] = true
	}
	for _, w := range append(append([]string(nil), defaultStart...), extraStart...) {
		k.start[Normalize(w)] = true
	}
	for _, w := range defaultHelp {
		k.help[Normalize(w)] = true
	}
	delete(k.stop, "")
	delete(k.start, "")
	return k
}

// Classify returns what text asks for with the default keywords.
func Classify(text string) Kind { return Default.Classify(text) }

// Classify returns what text asks for.
func (k Keywords) Classify(text string) Kind {
	if len(text) > 200 {
		return None // a keyword with a few words of courtesy is short
	}
	words := strings.Fields(Normalize(text))
	if len(words) == 0 {
		return None
	}
	// Whole first: "stop all" and "darme de baja" are keywords of their own.
	if kind := k.match(strings.Join(words, " ")); kind != None {
		return kind
	}
	var rest []string
	for _, w := range words {
		if !courtesy[w] {
			rest = append(rest, w)
		}
	}
	if len(rest) == 0 || len(words)-len(rest) > maxCourtesy {
		return None
	}
	return k.match(strings.Join(rest, " "))
}

func (k Keywords) match(s string) Kind {
	switch {
	case k.stop[s]:
		return Stop
	case k.start[s]:
		return Start
	case k.help[s]:
		return Help
	}
	return None
}

// Normalize is s lower-cased, its Latin accents taken off, and every run
// of what is not a letter or a digit made one space: "  Opt-Out!! " and
// "OPT OUT" are both "opt out"; "Arrêt" is "arret".
func Normalize(s string) string {
	var b strings.Builder
	space := true
	for _, r := range s {
		r = unicode.ToLower(fold(r))
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// fold takes the accent off a Latin letter (the keywords' languages need
// no more than Latin-1 and Latin Extended-A's common letters).
func fold(r rune) rune {
	if r < 0xC0 || r > 0x17F {
		return r
	}
	if f, ok := folds[r]; ok {
		return f
	}
	return r
}

var folds = func() map[rune]rune {
	m := map[rune]rune{}
	for base, accented := range map[rune]string{
		'a': "àáâãäåāăą", 'A': "ÀÁÂÃÄÅĀĂĄ", 'c': "çćĉċč", 'C': "ÇĆĈĊČ",
		'e': "èéêëēĕėęě", 'E': "ÈÉÊËĒĔĖĘĚ", 'i': "ìíîïĩīĭįı", 'I': "ÌÍÎÏĨĪĬĮİ",
		'n': "ñńņňŉ", 'N': "ÑŃŅŇ", 'o': "òóôõöøōŏő", 'O': "ÒÓÔÕÖØŌŎŐ",
		'u': "ùúûüũūŭůűų", 'U': "ÙÚÛÜŨŪŬŮŰŲ", 'y': "ýÿ", 'Y': "ÝŸ",
		's': "śŝşš", 'S': "ŚŜŞŠ", 'z': "źżž", 'Z': "ŹŻŽ",
	} {
		for _, r := range accented {
			m[r] = base
		}
	}
	return m
}()

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
