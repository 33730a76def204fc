module github.com/txlab/txlab

go 1.26
