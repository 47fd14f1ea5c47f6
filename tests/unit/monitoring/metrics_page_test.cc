// MetricsPage and LatencyHistogram: the exposition formats, byte for byte.
#include "ddprun/monitoring/metrics_page.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

TEST_CASE("a page in the text format names counters with _total and escapes labels and help") {
  MetricsPage page(MetricsFormat::kPrometheusText);
  page.Family("ddprun_job_restarts", MetricType::kCounter, "Restarts\\used\nso far");
  page.Sample({{"job", "a \"quoted\\\" job\nid"}}, 3);
  page.Family("ddprun_rank_steps_per_second", MetricType::kGauge, "Pace");
  page.Sample({{"job", "j"}, {"rank", "0"}}, 12.5);
  page.Sample({}, 1e20);
  CHECK(page.Finish() ==
        "# HELP ddprun_job_restarts_total Restarts\\\\used\\nso far\n"
        "# TYPE ddprun_job_restarts_total counter\n"
        "ddprun_job_restarts_total{job=\"a \\\"quoted\\\\\\\" job\\nid\"} 3\n"
        "# HELP ddprun_rank_steps_per_second Pace\n"
        "# TYPE ddprun_rank_steps_per_second gauge\n"
        "ddprun_rank_steps_per_second{job=\"j\",rank=\"0\"} 12.5\n"
        "ddprun_rank_steps_per_second 1e+20\n");
}

TEST_CASE("an OpenMetrics page names a counter family without _total and ends with # EOF") {
  MetricsPage page(MetricsFormat::kOpenMetrics);
  page.Family("ddprun_job_hangs", MetricType::kCounter, "Hangs");
  page.Sample({{"job", "j"}}, 0);
  CHECK(page.Finish() ==
        "# HELP ddprun_job_hangs Hangs\n"
        "# TYPE ddprun_job_hangs counter\n"
        "ddprun_job_hangs_total{job=\"j\"} 0\n"
        "# EOF\n");
}

TEST_CASE("a histogram's buckets are cumulative, bounds are inclusive, and +Inf counts all") {
  LatencyHistogram histogram;
  histogram.Observe(1ms);     // the first bucket: at most 0.001
  histogram.Observe(1500us);  // 0.0025
  histogram.Observe(2h);      // above every bound
  CHECK(histogram.counts()[0] == 1);
  CHECK(histogram.counts()[1] == 1);
  CHECK(histogram.counts().back() == 1);
  CHECK(histogram.count() == 3);
  MetricsPage page(MetricsFormat::kPrometheusText);
  page.Family("ddprun_restart_seconds", MetricType::kHistogram, "Restarts");
  page.Histogram({{"job", "j"}}, histogram);
  const std::string text = page.Finish();
  CHECK(text.find("ddprun_restart_seconds_bucket{job=\"j\",le=\"0.001\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("ddprun_restart_seconds_bucket{job=\"j\",le=\"0.0025\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("ddprun_restart_seconds_bucket{job=\"j\",le=\"600.0\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("ddprun_restart_seconds_bucket{job=\"j\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("ddprun_restart_seconds_sum{job=\"j\"} 7200.0025\n") != std::string::npos);
  CHECK(text.find("ddprun_restart_seconds_count{job=\"j\"} 3\n") != std::string::npos);
}

TEST_CASE("the format follows the Accept header: OpenMetrics only when it is named") {
  CHECK(MetricsFormatForAccept("") == MetricsFormat::kPrometheusText);
  CHECK(MetricsFormatForAccept("text/plain;version=0.0.4;q=1,*/*;q=0.1") ==
        MetricsFormat::kPrometheusText);
  CHECK(MetricsFormatForAccept("application/openmetrics-text;version=1.0.0;q=0.75,"
                               "text/plain;version=0.0.4;q=0.5") == MetricsFormat::kOpenMetrics);
  CHECK(MetricsContentType(MetricsFormat::kOpenMetrics) ==
        "application/openmetrics-text; version=1.0.0; charset=utf-8");
}
