// spdlog's out-of-line definitions, compiled once here instead of in every translation unit that
// includes ddprun/base/logging.h. Every target sees spdlog with SPDLOG_COMPILED_LIB (cmake/
// Dependencies.cmake), so its headers only declare; this file includes the definitions (the
// headers' -inl.h halves) and instantiates the templates the project uses: the stderr colour
// sink and its factory (logging.cc), and the stdout one spdlog's registry makes as its default
// logger. Header-only, each such translation unit compiled spdlog anew: about 9 of its 10 s.
// fmt stays header-only (FMT_HEADER_ONLY); it costs each unit well under a second.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_definitions.cc is built with SPDLOG_COMPILED_LIB (cmake/Dependencies.cmake)"
#endif

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

#include <mutex>

template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger> spdlog::stderr_color_mt<spdlog::synchronous_factory>(
    const std::string& logger_name, color_mode mode);
