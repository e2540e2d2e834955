module coz.test/go_progress

go 1.19

require github.com/plasma-umass/coz/go v0.0.0

replace github.com/plasma-umass/coz/go => ../../../include/go/coz
