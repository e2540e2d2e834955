# cmake -DGO=... -DSOURCE_DIR=... -DOUTPUT=... -DWORK_DIR=... [-DEXTERNAL=ON] -P go_build.cmake
# Builds a Go program offline, with a cache and module path of its own in
# the build tree. EXTERNAL: with cgo and the external linker, the command
# `coz run` gives for a statically linked Go binary; else as `go build`
# makes it without cgo (statically linked).
foreach(var GO SOURCE_DIR OUTPUT WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "go_build.cmake: ${var} is not set")
  endif()
endforeach()
set(ENV{GOCACHE} "${WORK_DIR}/cache")
set(ENV{GOPATH} "${WORK_DIR}/path")
set(ENV{GOPROXY} "off")
set(ENV{GOTOOLCHAIN} "local")
set(ENV{GOFLAGS} "-mod=mod")
if(EXTERNAL)
  set(ENV{CGO_ENABLED} "1")
  set(args build -ldflags=-linkmode=external -o "${OUTPUT}" .)
else()
  set(ENV{CGO_ENABLED} "0")
  set(args build -o "${OUTPUT}" .)
endif()
execute_process(COMMAND "${GO}" ${args} WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "go build failed for ${OUTPUT}")
endif()
