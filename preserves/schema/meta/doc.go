package meta

//go:generate go run ../../../cmd/preserves-schema-go -o .. -import github.com/syndicate-go/syndicate/preserves/schema -package schema=meta .
