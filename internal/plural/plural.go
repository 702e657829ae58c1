// Package plural writes counts as people read them: "1 cluster", "2 clusters", never
// "1 cluster(s)".
package plural

import "strconv"

// Of is n and word, with an "s" added unless n is 1 ("1 finding", "0 findings").
func Of(n int, word string) string {
	return Forms(n, word, word+"s")
}

// Forms is n with the singular or the plural form given ("1 entry", "3 entries").
func Forms(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
