// Package options owns the controller manager's command line: the option
// structs with upstream's flag names and defaults (upstream's own option
// types where one exists), their validation into one error naming every
// bad flag and value, the --controllers vocabulary (Controller,
// ResolveControllers) and the leader migration plan read from
// --leader-migration-config. The wiring package (internal/app) builds
// Options with its controller table and reads them; the leader and serving
// packages read them too. It knows no controller beyond the node IPAM
// allocator, whose own checks validate the IPAM flags.
package options
