package classify

// matcher finds, in one pass over a text, which of the table's All literals occur in it
// (Aho–Corasick automaton compiled to a DFA over a reduced alphabet). ASCII letters are folded
// to lower case while scanning, and backslashes in front of a quote (JSON/Go escaping, as in
// klog's err="...\"name\"...") are skipped, so the scan sees the same text as normalize.
type matcher struct {
	class [256]uint8 // byte -> alphabet class; 0 = a byte that occurs in no literal
	nc    int        // number of classes
	delta []uint16   // state*nc + class -> next state, with outFlag set when the state has outputs
	out   [][]uint16 // literal ids ending at a state (including through fail links)
	lits  []string
}

// maxLiterals bounds the literal set so that a fixed-size bitset can be used per scan.
const maxLiterals = 64 * len(litSet{})

// outFlag marks, in delta, a target state at which literals end; states fit in the low 15 bits.
const outFlag = 1 << 15

type litSet [16]uint64

func (s *litSet) set(id uint16)      { s[id>>6] |= 1 << (id & 63) }
func (s *litSet) has(id uint16) bool { return s[id>>6]&(1<<(id&63)) != 0 }
func (s *litSet) empty() bool        { return *s == litSet{} }

// newMatcher builds the automaton for lits (lower-case ASCII strings).
func newMatcher(lits []string) *matcher {
	if len(lits) > maxLiterals {
		panic("classify: too many literals for the matcher")
	}
	m := &matcher{lits: lits}
	// Alphabet: one class per distinct byte used by a literal; upper-case letters share the
	// class of their lower-case form.
	next := uint8(1)
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			b := l[i]
			if m.class[b] == 0 {
				if next == 255 {
					panic("classify: literal alphabet too large")
				}
				m.class[b] = next
				next++
			}
		}
	}
	for b := 'a'; b <= 'z'; b++ {
		m.class[b-'a'+'A'] = m.class[b]
	}
	m.nc = int(next)

	// Trie, one row of nc transitions per state in one flat slice (a few allocations, not one
	// per state).
	nc := int32(m.nc)
	goTo := make([]int32, nc, 64*nc)
	out := [][]uint16{nil}
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := int32(m.class[l[i]])
			if goTo[s*nc+c] == 0 {
				goTo = append(goTo, make([]int32, nc)...)
				out = append(out, nil)
				goTo[s*nc+c] = int32(len(out) - 1)
			}
			s = goTo[s*nc+c]
		}
		out[s] = append(out[s], uint16(id))
	}
	states := len(out)

	// Fail links (BFS) and the completed transition function.
	fail := make([]int32, states)
	queue := make([]int32, 0, states)
	for c := int32(1); c < nc; c++ {
		if s := goTo[c]; s != 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		out[s] = append(out[s], out[fail[s]]...)
		for c := int32(1); c < nc; c++ {
			t := goTo[s*nc+c]
			if t == 0 {
				goTo[s*nc+c] = goTo[fail[s]*nc+c]
				continue
			}
			fail[t] = goTo[fail[s]*nc+c]
			queue = append(queue, t)
		}
	}
	if states >= outFlag {
		panic("classify: literal automaton too large")
	}
	m.delta = make([]uint16, len(goTo))
	for i, t := range goTo {
		v := uint16(t)
		if len(out[t]) > 0 {
			v |= outFlag
		}
		m.delta[i] = v
	}
	m.out = out
	return m
}

// scan records in found every literal that occurs in text.
func (m *matcher) scan(text string, found *litSet) {
	st := 0
	nc := m.nc
	delta := m.delta
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b == '\\' {
			j := i + 1
			for j < len(text) && text[j] == '\\' {
				j++
			}
			if j < len(text) && text[j] == '"' {
				i = j - 1
				continue
			}
		}
		v := delta[st*nc+int(m.class[b])]
		st = int(v &^ outFlag)
		if v&outFlag != 0 {
			for _, id := range m.out[st] {
				found.set(id)
			}
		}
	}
}
