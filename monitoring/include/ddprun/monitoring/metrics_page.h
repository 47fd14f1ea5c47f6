// MetricsPage: writes a /metrics page in Prometheus's text exposition format 0.0.4, or in
// OpenMetrics 1.0.0 when the scraper asks for it (its Accept header). The caller adds families
// one after another, each with its samples; the page escapes label values and help text, writes
// counters' `_total` and histograms' cumulative `_bucket`, `_sum` and `_count` samples, and ends
// an OpenMetrics page with `# EOF`. docs/metrics.md lists ddprun's families.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddprun/base/latency_histogram.h"

namespace ddprun {

enum class MetricsFormat { kPrometheusText, kOpenMetrics };

// The format a scraper's Accept header asks for: OpenMetrics when it names
// application/openmetrics-text (as Prometheus does, preferring it), else the text format.
MetricsFormat MetricsFormatForAccept(std::string_view accept);
// The Content-Type of a page in `format`.
std::string_view MetricsContentType(MetricsFormat format);

enum class MetricType { kCounter, kGauge, kHistogram };

// A sample's labels, in the order written: {{"job", "train"}, {"rank", "3"}}.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsPage {
 public:
  explicit MetricsPage(MetricsFormat format) : format_(format) {}

  // Starts the family `name` (for a counter without `_total`, which its samples get). A family
  // comes once per page; its samples follow before the next family.
  void Family(std::string_view name, MetricType type, std::string_view help);
  // A sample of the current counter or gauge family.
  void Sample(const MetricLabels& labels, double value);
  // The samples of one histogram of the current histogram family.
  void Histogram(const MetricLabels& labels, const LatencyHistogram& histogram);

  // The page (the format's terminator added); the page is empty afterwards.
  std::string Finish();

 private:
  void WriteSample(std::string_view suffix, const MetricLabels& labels,
                   const std::pair<std::string, std::string>* extra, double value);

  const MetricsFormat format_;
  std::string text_;
  std::string family_;
  MetricType type_ = MetricType::kGauge;
};

}  // namespace ddprun
