# What the wheel holds (pyproject.toml; scikit-build-core installs the component `wheel` only):
#   <scripts>/ddprun, <scripts>/ddprund         the programs, on the environment's PATH
#   <data>/libexec/ddprun/ddprun                the network launcher, which ddprun runs from
#                                               ../libexec/ddprun beside its own folder: pip puts
#                                               a wheel's data under the environment's root, its
#                                               scripts in the root's bin/
#   the Python package ddprun (python/ddprun)   `python -m ddprun`, and where the programs are
# All three programs are static (DDPRUN_STATIC_DAEMONS): nothing in the wheel loads a shared
# library, so it runs on any x86-64 Linux with glibc 2.31 or newer around it, or none.
install(TARGETS ddprun ddprund RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR} COMPONENT wheel)
install(TARGETS ddprun_network RUNTIME DESTINATION ${SKBUILD_DATA_DIR}/libexec/ddprun
  COMPONENT wheel)
