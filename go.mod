module github.com/seed54442f1a/rdmapool

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	golang.org/x/sys v0.50.0
)
