// MetricsPage; see metrics_page.h.
#include "ddprun/monitoring/metrics_page.h"

#include <cmath>
#include <cstdio>

namespace ddprun {
namespace {

// Backslash and line feed escaped, and with `quotes` the double quote: a label value's escapes
// (both formats); help text's are the first two.
void AppendEscaped(std::string& out, std::string_view text, bool quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// Integers as integers (counts, steps), other values with enough digits to read back the same.
void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char text[32];
    if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
      std::snprintf(text, sizeof(text), "%.0f", value);
    } else {
      std::snprintf(text, sizeof(text), "%.9g", value);
    }
    out += text;
  }
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

MetricsFormat MetricsFormatForAccept(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos
             ? MetricsFormat::kOpenMetrics
             : MetricsFormat::kPrometheusText;
}

std::string_view MetricsContentType(MetricsFormat format) {
  return format == MetricsFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

void MetricsPage::Family(std::string_view name, MetricType type, std::string_view help) {
  family_ = name;
  type_ = type;
  // The text format names a counter family by its samples (`_total`); OpenMetrics without it.
  std::string described(name);
  if (type == MetricType::kCounter && format_ == MetricsFormat::kPrometheusText) {
    described += "_total";
  }
  text_ += "# HELP " + described + " ";
  AppendEscaped(text_, help, /*quotes=*/false);
  text_ += "\n# TYPE " + described + " ";
  text_ += TypeName(type);
  text_ += "\n";
}

void MetricsPage::Sample(const MetricLabels& labels, double value) {
  WriteSample(type_ == MetricType::kCounter ? "_total" : "", labels, nullptr, value);
}

void MetricsPage::Histogram(const MetricLabels& labels, const LatencyHistogram& histogram) {
  uint64_t cumulative = 0;
  char bound[32];
  for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
    cumulative += histogram.counts()[i];
    std::snprintf(bound, sizeof(bound), "%g", LatencyHistogram::kBounds[i]);
    // OpenMetrics wants a bound as a float ("1.0"); the text format reads either.
    std::pair<std::string, std::string> le{"le", bound};
    if (le.second.find('.') == std::string::npos) le.second += ".0";
    WriteSample("_bucket", labels, &le, static_cast<double>(cumulative));
  }
  const std::pair<std::string, std::string> infinity{"le", "+Inf"};
  WriteSample("_bucket", labels, &infinity, static_cast<double>(histogram.count()));
  WriteSample("_sum", labels, nullptr, histogram.sum_seconds());
  WriteSample("_count", labels, nullptr, static_cast<double>(histogram.count()));
}

void MetricsPage::WriteSample(std::string_view suffix, const MetricLabels& labels,
                              const std::pair<std::string, std::string>* extra, double value) {
  text_ += family_;
  text_ += suffix;
  if (!labels.empty() || extra != nullptr) {
    text_ += '{';
    bool first = true;
    auto add = [&](const std::pair<std::string, std::string>& label) {
      if (!first) text_ += ',';
      first = false;
      text_ += label.first + "=\"";
      AppendEscaped(text_, label.second, /*quotes=*/true);
      text_ += '"';
    };
    for (const auto& label : labels) add(label);
    if (extra != nullptr) add(*extra);
    text_ += '}';
  }
  text_ += ' ';
  AppendValue(text_, value);
  text_ += '\n';
}

std::string MetricsPage::Finish() {
  if (format_ == MetricsFormat::kOpenMetrics) text_ += "# EOF\n";
  family_.clear();
  return std::exchange(text_, {});
}

}  // namespace ddprun
