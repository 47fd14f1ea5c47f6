# cmake -DIN=x.pb.cc -DOUT=x.lazy.pb.cc -P lazy_descriptors.cmake: OUT is IN without the static
# object through which protoc's code registers the file's descriptor at start-up (see
# CMakeLists.txt); Protobuf then registers it when its messages' descriptors are first asked for.
# IN unchanged where it has no such object (another Protobuf release).
file(READ ${IN} text)
string(REGEX REPLACE
  "\n[A-Z_0-9 ]*static ::_pbi::AddDescriptorsRunner dynamic_init_dummy_[A-Za-z_0-9]+\\([^)]*\\);\n"
  "\n// (ddprun: the descriptor is registered when first used; proto/lazy_descriptors.cmake)\n"
  lazy "${text}")
if(lazy STREQUAL text)
  message(STATUS "${IN}: no start-up registration found; compiled as protoc wrote it")
endif()
file(WRITE ${OUT}.tmp "${lazy}")
file(RENAME ${OUT}.tmp ${OUT})
