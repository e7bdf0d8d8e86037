module github.com/latchkey/latchkey

go 1.26.8
