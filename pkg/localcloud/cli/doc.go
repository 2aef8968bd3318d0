// Package cli is the `stratus localcloud` command: `serve` runs a
// localcloud, and `instances`, `lbs`, `routes` and `stats` talk to one for
// people and scripts, with table or `-o json` output. The URL and token
// come from --url/--token/--token-file or LOCALCLOUD_URL/LOCALCLOUD_TOKEN.
package cli
