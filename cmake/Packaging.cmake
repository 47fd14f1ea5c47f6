# The Debian package, built by CPack from a build without CUDA (Debian has no CUDA packages to
# depend on; GPU users build from source):
#
#   cmake -S . -B build-deb -G Ninja -DCMAKE_INSTALL_PREFIX=/usr -DDDPRUN_WITH_CUDA=OFF \
#         -DBUILD_TESTING=OFF
#   cmake --build build-deb --target ddprun ddprund ddprun_runtime_shared
#   (cd build-deb && cpack -G DEB)
#
# packaging/check_deb.sh does that, installs the package, runs it and removes it. Its runtime
# dependencies are computed by dpkg-shlibdeps from the binaries: Debian's library packages, never
# the -dev ones.
set(CPACK_PACKAGE_NAME ddprun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ddprun")
set(CPACK_PACKAGE_CONTACT "ddprun maintainers <root@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "torchrun-style launcher, rendezvous daemon and data-parallel training runtime")
set(CPACK_PACKAGE_DESCRIPTION
  "ddprun starts one worker per device with torchrun's environment, restarts the group when a \
worker fails and never leaves orphans; ddprund serves the rendezvous of many jobs; \
libddprun_runtime gives C++ training code PyTorch DDP's semantics.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Built with -O2 -g like every build; the package carries the code without the debug info.
set(CPACK_STRIP_FILES ON)
# postinst makes the daemon's system user with adduser.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# A hang's report quotes the hung workers' native stacks, which gdb takes; without it the report
# says so and goes on.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gdb")
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/conffiles.in
  ${PROJECT_BINARY_DIR}/packaging/debian/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
  ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
  ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
  ${PROJECT_BINARY_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
