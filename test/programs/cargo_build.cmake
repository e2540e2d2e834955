# cmake -DCARGO=... -DMANIFEST=.../Cargo.toml -DTARGET_DIR=... [-DRUSTFLAGS=...] -P cargo_build.cmake
# Builds offline when the registry cache already holds the locked crates, and
# online otherwise (a fresh CI machine).
foreach(var CARGO MANIFEST TARGET_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "cargo_build.cmake: ${var} is not set")
  endif()
endforeach()

set(ENV{CARGO_TARGET_DIR} "${TARGET_DIR}")
if(DEFINED RUSTFLAGS)  # optional: -DRUSTFLAGS="-C symbol-mangling-version=v0"
  set(ENV{RUSTFLAGS} "${RUSTFLAGS}")
endif()
set(cargo_args build --release --locked --manifest-path "${MANIFEST}")

execute_process(COMMAND "${CARGO}" ${cargo_args} --offline
  RESULT_VARIABLE offline_result OUTPUT_VARIABLE offline_out ERROR_VARIABLE offline_err)
if(offline_result EQUAL 0)
  return()
endif()

message(STATUS "cargo --offline failed, building online")
execute_process(COMMAND "${CARGO}" ${cargo_args} RESULT_VARIABLE online_result)
if(NOT online_result EQUAL 0)
  message(FATAL_ERROR "cargo build failed (offline attempt said: ${offline_err})")
endif()
