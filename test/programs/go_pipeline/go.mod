module coz.test/go_pipeline

go 1.19
