//go:build race

package dataspace

const checkTurns = true
