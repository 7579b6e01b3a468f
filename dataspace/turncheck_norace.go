//go:build !race

package dataspace

const checkTurns = false
