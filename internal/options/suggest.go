package options

import "strings"

// Suggest returns the declared key closest to key by edit distance, for a did-you-mean hint
// about a key nothing declares; "" when no key is close enough (at most 3 edits, and fewer
// than a third of key's length).
func Suggest(key string) string {
	best, bestD := "", 4
	limit := len(key) / 3
	for k, o := range byKey {
		if o.Prefix {
			continue // a key under a prefix is known; a misspelled prefix is not suggested
		}
		d := editDistance(key, k)
		if d < bestD && d <= limit || d == bestD && d <= limit && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by bytes.
func editDistance(a, b string) int {
	if a == b {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Unknown reports whether key is declared by no option. A key in a server configuration that
// is unknown gets a WARN with Suggest's hint; Fluss ignores such keys silently.
func Unknown(key string) bool {
	_, ok := Lookup(strings.TrimSpace(key))
	return !ok
}
