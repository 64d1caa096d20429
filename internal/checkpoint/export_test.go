package checkpoint

// RacyWindow is how old a file must be for the stat cache to vouch for it.
const RacyWindow = racyWindow
