package observe

// UnknownController names the writer of a change when nothing tells which
// controller made it: an honest "unknown" rather than a guess.
const UnknownController = "unknown"
