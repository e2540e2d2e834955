module github.com/plasma-umass/coz/go

go 1.19
