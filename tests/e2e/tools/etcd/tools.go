//go:build tools

// Package tools pins etcd for the end-to-end tests; it is never compiled.
package tools

import _ "go.etcd.io/etcd/server/v3"
