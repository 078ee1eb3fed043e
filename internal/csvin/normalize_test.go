package csvin

// normalize is one number through a normalizer for region, for tests.
func normalize(raw, region string) (string, error) {
	n, err := newNormalizer(region)
	if err != nil {
		return "", err
	}
	return n.normalize(raw)
}
