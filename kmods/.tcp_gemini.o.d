/work/main/kmods/.tcp_gemini.o.d: /work/main/kmods/tcp_gemini.rs /work/main/kmods/algo/src/lib.rs /work/main/kmods/algo/src/fixed.rs /work/main/kmods/algo/src/gemini.rs /work/main/kmods/algo/src/linux.rs /work/main/kmods/algo/src/oscar.rs /work/main/kmods/algo/src/params.rs /work/main/kmods/algo/src/smartt.rs /work/main/kmods/algo/src/uno.rs /work/main/kmods/algo/src/window.rs /work/main/kmods/glue.rs ./rust/libcore.rmeta ./rust/libkernel.rmeta ./rust/libffi.rmeta ./rust/libcompiler_builtins.rmeta ./rust/libmacros.so ./rust/libbindings.rmeta ./rust/libuapi.rmeta ./rust/libbuild_error.rmeta

/work/main/kmods/tcp_gemini.o: /work/main/kmods/tcp_gemini.rs /work/main/kmods/algo/src/lib.rs /work/main/kmods/algo/src/fixed.rs /work/main/kmods/algo/src/gemini.rs /work/main/kmods/algo/src/linux.rs /work/main/kmods/algo/src/oscar.rs /work/main/kmods/algo/src/params.rs /work/main/kmods/algo/src/smartt.rs /work/main/kmods/algo/src/uno.rs /work/main/kmods/algo/src/window.rs /work/main/kmods/glue.rs ./rust/libcore.rmeta ./rust/libkernel.rmeta ./rust/libffi.rmeta ./rust/libcompiler_builtins.rmeta ./rust/libmacros.so ./rust/libbindings.rmeta ./rust/libuapi.rmeta ./rust/libbuild_error.rmeta

/work/main/kmods/tcp_gemini.rs:
/work/main/kmods/algo/src/lib.rs:
/work/main/kmods/algo/src/fixed.rs:
/work/main/kmods/algo/src/gemini.rs:
/work/main/kmods/algo/src/linux.rs:
/work/main/kmods/algo/src/oscar.rs:
/work/main/kmods/algo/src/params.rs:
/work/main/kmods/algo/src/smartt.rs:
/work/main/kmods/algo/src/uno.rs:
/work/main/kmods/algo/src/window.rs:
/work/main/kmods/glue.rs:
./rust/libcore.rmeta:
./rust/libkernel.rmeta:
./rust/libffi.rmeta:
./rust/libcompiler_builtins.rmeta:
./rust/libmacros.so:
./rust/libbindings.rmeta:
./rust/libuapi.rmeta:
./rust/libbuild_error.rmeta:
