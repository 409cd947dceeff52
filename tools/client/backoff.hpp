#pragma once

/// Per (project, resource type) backoff of the work-fetch design (001): when we ask a project
/// for work of a type and get none, the interval doubles up to a limit (one day); a job of
/// that type clears it.

namespace cobble::client {

class backoff {
public:
  /// Asked for work of this type and got none at `now`: back off for the next interval.
  void no_work(double now, double min_interval, double max_interval);
  /// Got a job of this type: no backoff any more.
  void got_job() {
    interval_ = 0;
    until_ = 0;
  }
  /// True while backed off.
  bool backed_off(double now) const { return now < until_; }
  /// True once the interval has reached the limit (the design's "at the max").
  bool at_max(double max_interval) const { return interval_ >= max_interval; }
  double interval() const { return interval_; }
  double until() const { return until_; }

private:
  double interval_ = 0;
  double until_ = 0;
};

} // namespace cobble::client
