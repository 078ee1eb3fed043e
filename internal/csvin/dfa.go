package csvin

import (
	"encoding/binary"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
)

// digitMatcher answers regexp.Match for a pattern of phonenumbers' metadata
// on a string of ASCII digits, the only input the fast path gives it. The
// pattern is compiled to a deterministic automaton over the ten digits, so
// a match is one table lookup per digit, with no allocation. Package
// regexp's backtracker was most of the cost of normalizing a number, and
// normalizing most of the cost of reading a large file.
//
// The automaton is built in full on the first Match (at most a few hundred
// states; most of a shared calling code's regions are never asked), and is
// read-only afterwards: a digitMatcher is
// safe for concurrent use. A pattern the construction does not handle (an
// empty-width assertion other than beginning or end of text, or too many
// states) is matched by package regexp, and so is any input with a byte
// that is not a digit: the answers are the regexp's in every case.
type digitMatcher struct {
	pattern string
	full    bool // the whole input must match, not only a prefix

	once   sync.Once
	states []dfaState // states[0] is the start; nil: use the regexp

	reOnce sync.Once
	re     *regexp.Regexp
}

// dfaState is one state of the automaton. next[d] is the state after digit
// d, -1 for the dead state (no match whatever follows).
type dfaState struct {
	next [10]int32
	// atEnd: a match ends here when the input ends here; inside: a match
	// ends here when more input follows (only a prefix match asks).
	atEnd, inside bool
}

// maxDFAStates bounds an automaton. phonenumbers' patterns need at most a
// few hundred; a pattern that needs more is left to package regexp.
const maxDFAStates = 4096

// newDigitMatcher returns a matcher for "^(?:" + pattern + ")", followed by
// "$" if full. The pattern must compile: it comes from the library's
// metadata, which the tests compile in full.
func newDigitMatcher(pattern string, full bool) *digitMatcher {
	return &digitMatcher{pattern: pattern, full: full}
}

// Match reports whether the pattern matches b (from its start; to its end
// if full), exactly as the regexp would.
func (m *digitMatcher) Match(b []byte) bool {
	m.once.Do(m.build)
	if m.states == nil {
		return m.slowMatch(b)
	}
	s := &m.states[0]
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return m.slowMatch(b)
		}
		if s.inside && !m.full {
			return true
		}
		n := s.next[d]
		if n < 0 {
			return false // no thread of the pattern survives this digit
		}
		s = &m.states[n]
	}
	return s.atEnd
}

func (m *digitMatcher) build() {
	// The anchors are the automaton's own: it starts at the start of the
	// input, and a full match is one that ends with it.
	re, err := syntax.Parse(m.pattern, syntax.Perl)
	if err != nil {
		return
	}
	if prog, err := syntax.Compile(re.Simplify()); err == nil {
		m.states = buildDFA(prog)
	}
}

// slowMatch is Match by package regexp. It matches a copy of b: b would
// escape to the heap through regexp, and with it the caller's buffer of
// digits, on every call of the fast path.
func (m *digitMatcher) slowMatch(b []byte) bool {
	m.reOnce.Do(func() {
		expr := "^(?:" + m.pattern + ")"
		if m.full {
			expr += "$"
		}
		m.re = regexp.MustCompile(expr)
	})
	return m.re.Match(slices.Clone(b))
}

// buildDFA builds the automaton of prog by subset construction, or returns
// nil if prog has what the construction does not handle or needs more than
// maxDFAStates states.
//
// A state is the set of instructions the threads of the NFA wait at,
// before following empty transitions: following them needs to know whether
// the input starts or ends at this point, which the state's position tells
// (start: only the start state) and the caller of the closure says (end).
func buildDFA(prog *syntax.Prog) []dfaState {
	for _, in := range prog.Inst {
		if in.Op == syntax.InstEmptyWidth && syntax.EmptyOp(in.Arg)&^(syntax.EmptyBeginText|syntax.EmptyEndText|syntax.EmptyBeginLine|syntax.EmptyEndLine) != 0 {
			return nil // word boundaries depend on the characters around
		}
	}
	type pending struct {
		pcs   []uint32
		start bool
	}
	index := map[string]int32{}
	var queue []pending
	var states []dfaState
	add := func(pcs []uint32, start bool) int32 {
		if len(pcs) == 0 {
			return -1
		}
		key := dfaKey(pcs, start)
		if i, ok := index[key]; ok {
			return i
		}
		i := int32(len(states))
		index[key] = i
		states = append(states, dfaState{})
		queue = append(queue, pending{pcs: pcs, start: start})
		return i
	}
	add([]uint32{uint32(prog.Start)}, true)
	for i := 0; i < len(queue); i++ {
		if len(states) > maxDFAStates {
			return nil
		}
		p := queue[i]
		inside := closure(prog, p.pcs, p.start, false)
		ended := closure(prog, p.pcs, p.start, true)
		st := dfaState{}
		for _, pc := range ended {
			if prog.Inst[pc].Op == syntax.InstMatch {
				st.atEnd = true
			}
		}
		for d := range 10 {
			var next []uint32
			for _, pc := range inside {
				in := &prog.Inst[pc]
				switch in.Op {
				case syntax.InstMatch:
					st.inside = true
				case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
					if in.MatchRune(rune('0' + d)) {
						next = append(next, in.Out)
					}
				}
			}
			slices.Sort(next)
			st.next[d] = add(slices.Compact(next), false)
		}
		states[i] = st
	}
	if len(states) > maxDFAStates {
		return nil
	}
	return states
}

// closure returns the instructions that consume input or match, reached
// from pcs by empty transitions at a point of the input that is its start
// (start) or its end (end), or neither.
func closure(prog *syntax.Prog, pcs []uint32, start, end bool) []uint32 {
	var out []uint32
	seen := make([]bool, len(prog.Inst))
	stack := slices.Clone(pcs)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			if (op&(syntax.EmptyBeginText|syntax.EmptyBeginLine) == 0 || start) &&
				(op&(syntax.EmptyEndText|syntax.EmptyEndLine) == 0 || end) {
				stack = append(stack, in.Out)
			}
		case syntax.InstMatch, syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			out = append(out, pc)
		}
	}
	slices.Sort(out)
	return out
}

func dfaKey(pcs []uint32, start bool) string {
	b := make([]byte, 1, 1+4*len(pcs))
	if start {
		b[0] = 1
	}
	for _, pc := range pcs {
		b = binary.LittleEndian.AppendUint32(b, pc)
	}
	return string(b)
}
