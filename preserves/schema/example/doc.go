// Package example holds the worked example of the Preserves Schema
// digest (draw.prs, geo.prs): every construct of the schema language,
// compiled by preserves-schema-go into the packages draw and geo. Its
// tests check the generated code against the digest's table of values.
package example

//go:generate go run ../../../cmd/preserves-schema-go -o . -import github.com/syndicate-go/syndicate/preserves/schema/example .
