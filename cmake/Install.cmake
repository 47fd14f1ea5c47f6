# What `cmake --install` puts under the prefix (the .deb: under /usr, and /etc):
#   bin/ddprun, bin/ddprund
#   libexec/ddprun/ddprun               the network launcher, which bin/ddprun runs from its own
#                                       folder's ../libexec/ddprun (launcher/src/network_launcher.h)
#   lib/libddprun_runtime.so.*          the runtime, shared (ddprun::runtime)
#   include/ddp/*.h, include/ddprun/    its public headers (and the base headers they include)
#   lib/cmake/ddprun/                   find_package(ddprun) with version checking
#   lib/pkgconfig/ddprun.pc             pkg-config --cflags --libs ddprun
#   lib/systemd/system/ddprund@.service ddprund for one service account, running its jobs
#   lib/systemd/system/ddprund.service  the daemon's unit, reading
#   <sysconfdir>/ddprun/ddprund.conf    its settings (/etc/ddprun/ddprund.conf under /usr)
#   share/doc/ddprun/                   README.md, environment.md
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DDPRUN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)

install(TARGETS ddprun ddprund RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ddprun_network RUNTIME DESTINATION libexec/ddprun)
install(TARGETS ddprun_runtime_shared EXPORT ddprunTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/ddp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The base headers the runtime's public headers include, and the error macros for its users;
# nothing of the rendezvous.
install(FILES
  ${PROJECT_SOURCE_DIR}/base/include/ddprun/base/client_security.h
  ${PROJECT_SOURCE_DIR}/base/include/ddprun/base/status.h
  ${PROJECT_SOURCE_DIR}/base/include/ddprun/base/status_macros.h
  ${PROJECT_SOURCE_DIR}/base/include/ddprun/base/thread_annotations.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ddprun/base)

install(EXPORT ddprunTargets NAMESPACE ddprun:: DESTINATION ${DDPRUN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/packaging/ddprunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/ddprunConfig.cmake INSTALL_DESTINATION ${DDPRUN_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR)
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/ddprunConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/packaging/ddprunConfig.cmake
  ${PROJECT_BINARY_DIR}/packaging/ddprunConfigVersion.cmake
  DESTINATION ${DDPRUN_CMAKE_DIR})

# Relocatable: the prefix is found from where the .pc file is, so a package moved or installed
# with --prefix still points at its own headers and library.
file(RELATIVE_PATH DDPRUN_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
  ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/packaging/ddprun.pc.in
  ${PROJECT_BINARY_DIR}/packaging/ddprun.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/ddprun.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

configure_file(${PROJECT_SOURCE_DIR}/packaging/ddprund.service.in
  ${PROJECT_BINARY_DIR}/packaging/ddprund.service @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/packaging/ddprund@.service.in
  ${PROJECT_BINARY_DIR}/packaging/ddprund@.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/ddprund.service
  ${PROJECT_BINARY_DIR}/packaging/ddprund@.service
  DESTINATION lib/systemd/system)
# Absolute: GNUInstallDirs makes the full path /etc for the prefix /usr, <prefix>/etc otherwise.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/ddprund.conf
  DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/ddprun)

install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/environment.md
  ${PROJECT_SOURCE_DIR}/docs/metrics.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The Grafana dashboard of the daemons' metrics (docs/metrics.md).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/grafana/ddprun-dashboard.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/ddprun/grafana)
