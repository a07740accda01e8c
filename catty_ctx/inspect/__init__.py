"""`inspect` (docs/architecture.md#the-mechanisms): one session in one streaming pass (`session`), its
fold on two cores for large logs (`two_cores`), and the calibration distributions (`stats`)."""
