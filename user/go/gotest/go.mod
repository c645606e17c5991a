module kiln/gotest

go 1.19
