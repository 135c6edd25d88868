package wire

import "slices"

func sortedKeys[V any](m map[APIKey]V) []APIKey {
	keys := make([]APIKey, 0, len(m))
	for k := range m {
		if k != APIVersions && k != Authenticate {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
