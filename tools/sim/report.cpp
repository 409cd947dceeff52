#include "tools/sim/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace cobble::sim {

namespace {

constexpr int R = client::max_resources;

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

const char* color(int p) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return palette[static_cast<std::size_t>(p) % 10];
}

struct row {
  std::string name;
  const resource_figures* f;
};

std::vector<row> rows(const run_result& r) {
  std::vector<row> out{{"overall", &r.fig.overall}};
  for (int i = 0; i < R; ++i)
    if (r.fig.rsc[static_cast<std::size_t>(i)].present)
      out.push_back({resource_name(i), &r.fig.rsc[static_cast<std::size_t>(i)]});
  return out;
}

/// Chart geometry.
constexpr double W = 960, L = 70, RM = 20;

double x_of(double t, double dur) {
  return L + (W - L - RM) * (dur > 0 ? t / dur : 0);
}

std::string axis(double dur, double y0, double y1) {
  std::ostringstream o;
  o << "<line x1='" << L << "' y1='" << y1 << "' x2='" << W - RM << "' y2='" << y1
    << "' stroke='#444'/>";
  double days = dur / 86400;
  double tick = days <= 2 ? 0.25 : days <= 20 ? 1 : days <= 100 ? 10 : days <= 400 ? 30 : 100;
  for (double d = 0; d <= days + 1e-9; d += tick) {
    double x = x_of(d * 86400, dur);
    o << "<line x1='" << x << "' y1='" << y1 << "' x2='" << x << "' y2='" << y1 + 4
      << "' stroke='#444'/><text x='" << x << "' y='" << y1 + 16
      << "' font-size='10' text-anchor='middle'>" << fmt("%g", d) << "</text>";
  }
  o << "<text x='" << (W + L) / 2 << "' y='" << y1 + 30
    << "' font-size='11' text-anchor='middle'>virtual days</text>";
  (void)y0;
  return o.str();
}

std::string timeline_svg(const run_result& r) {
  std::vector<std::pair<int, int>> lanes;
  for (int i = 0; i < R; ++i)
    for (int s = 0; s < r.host0_instances[static_cast<std::size_t>(i)]; ++s)
      lanes.emplace_back(i, s);
  const double lane_h = 22, top = 10;
  double h = top + lane_h * static_cast<double>(lanes.size()) + 40;
  std::ostringstream o;
  o << "<svg id='timeline' class='chart' width='" << W << "' height='" << h
    << "' xmlns='http://www.w3.org/2000/svg'>";
  const int px = static_cast<int>(W - L - RM);
  for (std::size_t li = 0; li < lanes.size(); ++li) {
    auto [rsc, slot] = lanes[li];
    double y = top + lane_h * static_cast<double>(li);
    o << "<text x='" << L - 6 << "' y='" << y + 15 << "' font-size='11' text-anchor='end'>"
      << resource_name(rsc) << " " << slot << "</text>";
    // Per pixel column, the project that ran longest there (bounded size for long runs).
    std::vector<std::vector<double>> cols(static_cast<std::size_t>(px),
                                          std::vector<double>(r.projects.size(), 0.0));
    double per_px = r.duration / px;
    for (const auto& s : r.timeline) {
      if (s.rsc != rsc || s.slot != slot)
        continue;
      int c0 = std::clamp(static_cast<int>(s.start / per_px), 0, px - 1);
      int c1 = std::clamp(static_cast<int>(s.end / per_px), 0, px - 1);
      for (int c = c0; c <= c1; ++c) {
        double a = std::max(s.start, c * per_px), b = std::min(s.end, (c + 1) * per_px);
        if (b > a)
          cols[static_cast<std::size_t>(c)][static_cast<std::size_t>(s.project)] += b - a;
      }
    }
    int run_p = -1, run_start = 0;
    auto flush = [&](int end) {
      if (run_p >= 0)
        o << "<rect x='" << L + run_start << "' y='" << y << "' width='" << end - run_start
          << "' height='" << lane_h - 4 << "' fill='" << color(run_p) << "'><title>"
          << escape(r.projects[static_cast<std::size_t>(run_p)]) << "</title></rect>";
    };
    for (int c = 0; c < px; ++c) {
      const auto& v = cols[static_cast<std::size_t>(c)];
      int best = -1;
      double bv = per_px * 0.25;
      for (std::size_t p = 0; p < v.size(); ++p)
        if (v[p] > bv) {
          bv = v[p];
          best = static_cast<int>(p);
        }
      if (best != run_p) {
        flush(c);
        run_p = best;
        run_start = c;
      }
    }
    flush(px);
  }
  o << axis(r.duration, top, top + lane_h * static_cast<double>(lanes.size()) + 2) << "</svg>";
  return o.str();
}

/// Groups buckets so that a polyline has at most ~400 points.
std::size_t group_size(const run_result& r) {
  return std::max<std::size_t>(1, r.usage.size() / 400 + 1);
}

std::string share_svg(const run_result& r, int rsc) {
  const double top = 10, ch = 160;
  std::ostringstream o;
  o << "<svg id='share-" << resource_name(rsc) << "' class='chart' width='" << W << "' height='"
    << top + ch + 40 << "' xmlns='http://www.w3.org/2000/svg'>";
  for (double y : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    double yy = top + ch * (1 - y);
    o << "<line x1='" << L << "' y1='" << yy << "' x2='" << W - RM << "' y2='" << yy
      << "' stroke='#ddd'/><text x='" << L - 6 << "' y='" << yy + 4
      << "' font-size='10' text-anchor='end'>" << fmt("%.0f%%", y * 100) << "</text>";
  }
  auto ri = static_cast<std::size_t>(rsc);
  double shares = 0;
  for (std::size_t p = 0; p < r.projects.size(); ++p)
    if (r.has_app[ri][p])
      shares += r.shares[p];
  auto g = group_size(r);
  for (std::size_t p = 0; p < r.projects.size(); ++p) {
    if (!r.has_app[ri][p])
      continue;
    double target = r.shares[p] / shares;
    double yy = top + ch * (1 - target);
    o << "<line class='target' x1='" << L << "' y1='" << yy << "' x2='" << W - RM << "' y2='" << yy
      << "' stroke='" << color(static_cast<int>(p))
      << "' stroke-dasharray='6 4' stroke-width='1'><title>target " << fmt("%.0f%%", target * 100)
      << "</title></line>";
    std::ostringstream pts;
    for (std::size_t b = 0; b < r.usage.size(); b += g) {
      double mine = 0, all = 0;
      for (std::size_t k = b; k < std::min(b + g, r.usage.size()); ++k)
        for (std::size_t q = 0; q < r.projects.size(); ++q) {
          all += r.usage[k][q][ri];
          if (q == p)
            mine += r.usage[k][q][ri];
        }
      if (all <= 0)
        continue;
      double t = (static_cast<double>(b) + static_cast<double>(g) / 2) * r.sample_interval;
      pts << fmt("%.1f", x_of(std::min(t, r.duration), r.duration)) << ","
          << fmt("%.1f", top + ch * (1 - mine / all)) << " ";
    }
    o << "<polyline class='share' fill='none' stroke-width='1.5' stroke='"
      << color(static_cast<int>(p)) << "' points='" << pts.str() << "'><title>"
      << escape(r.projects[p]) << "</title></polyline>";
  }
  o << axis(r.duration, top, top + ch) << "</svg>";
  return o.str();
}

std::string debt_svg(const run_result& r) {
  const double top = 10, ch = 160;
  double lo = 0, hi = 0;
  for (const auto& b : r.debts)
    for (double d : b) {
      lo = std::min(lo, d / 3600);
      hi = std::max(hi, d / 3600);
    }
  if (hi - lo < 1e-9)
    lo = hi - 1;
  std::ostringstream o;
  o << "<svg id='debts' class='chart' width='" << W << "' height='" << top + ch + 40
    << "' xmlns='http://www.w3.org/2000/svg'>";
  auto y_of = [&](double h) { return top + ch * (hi - h) / (hi - lo); };
  for (int i = 0; i <= 4; ++i) {
    double v = lo + (hi - lo) * i / 4;
    o << "<line x1='" << L << "' y1='" << y_of(v) << "' x2='" << W - RM << "' y2='" << y_of(v)
      << "' stroke='#ddd'/><text x='" << L - 6 << "' y='" << y_of(v) + 4
      << "' font-size='10' text-anchor='end'>" << fmt("%.3g h", v) << "</text>";
  }
  auto g = group_size(r);
  for (std::size_t p = 0; p < r.projects.size(); ++p) {
    std::ostringstream pts;
    for (std::size_t b = 0; b < r.debts.size(); b += g) {
      double t = (static_cast<double>(b) + 1) * r.sample_interval;
      pts << fmt("%.1f", x_of(std::min(t, r.duration), r.duration)) << ","
          << fmt("%.1f", y_of(r.debts[b][p] / 3600)) << " ";
    }
    o << "<polyline class='debt' fill='none' stroke-width='1.5' stroke='"
      << color(static_cast<int>(p)) << "' points='" << pts.str() << "'><title>"
      << escape(r.projects[p]) << "</title></polyline>";
  }
  o << axis(r.duration, top, top + ch) << "</svg>";
  return o.str();
}

} // namespace

std::string figures_table(const run_result& r) {
  std::ostringstream o;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-10s %8s %8s %10s %9s %7s %7s %9s\n", "RESOURCE", "IDLE",
                "WASTED", "SHARE_VIOL", "MONOTONY", "RPCS", "JOBS", "RPCS/JOB");
  o << buf;
  for (const auto& row : rows(r)) {
    const auto& f = *row.f;
    std::snprintf(buf, sizeof buf, "%-10s %8.4f %8.4f %10.4f %9.4f %7ld %7ld %9.3f\n",
                  row.name.c_str(), f.idle_fraction, f.wasted_fraction, f.share_violation,
                  f.monotony, f.rpcs, f.jobs, f.rpcs_per_job);
    o << buf;
  }
  o << "\n";
  std::snprintf(buf, sizeof buf, "%-12s %7s %11s %9s %8s\n", "PROJECT", "SHARE", "FLOPS_SHARE",
                "MET", "MISSED");
  o << buf;
  for (const auto& p : r.fig.projects) {
    std::snprintf(buf, sizeof buf, "%-12s %7.3f %11.3f %9ld %8ld\n", p.name.c_str(), p.target_share,
                  p.flops_share, p.deadlines_met, p.deadlines_missed);
    o << buf;
  }
  if (r.fig.rpc_errors > 0)
    o << "\nRPC errors: " << r.fig.rpc_errors << "\n";
  return o.str();
}

std::string html_report(const run_result& r, const std::string& title) {
  std::ostringstream o;
  o << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>cobble-sim: " << escape(title)
    << "</title><style>body{font-family:sans-serif;margin:20px;color:#222}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
       "text-align:right}th{background:#f4f4f4}.legend span{display:inline-block;"
       "width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}</style></head><body>";
  o << "<h1>cobble-sim report</h1><p>Scenario <code>" << escape(title)
    << "</code>: " << fmt("%.2f", r.duration / 86400)
    << " virtual days, figures after a warm-up of " << fmt("%.2f", r.warmup / 86400) << " days; "
    << r.host_steps << " host-steps in " << fmt("%.2f", r.wall_seconds)
    << " s.</p><p class='legend'>";
  for (std::size_t p = 0; p < r.projects.size(); ++p)
    o << "<span style='background:" << color(static_cast<int>(p)) << "'></span>"
      << escape(r.projects[p]) << " (share " << fmt("%g", r.shares[p]) << ")";
  o << "</p><h2>Figures</h2><table id='figures'><tr><th>resource</th><th>idle fraction</th>"
       "<th>wasted fraction</th><th>share violation</th><th>monotony</th><th>RPCs</th>"
       "<th>jobs</th><th>RPCs per job</th></tr>";
  for (const auto& row : rows(r)) {
    const auto& f = *row.f;
    o << "<tr><th>" << row.name << "</th><td>" << fmt("%.4f", f.idle_fraction) << "</td><td>"
      << fmt("%.4f", f.wasted_fraction) << "</td><td>" << fmt("%.4f", f.share_violation)
      << "</td><td>" << fmt("%.4f", f.monotony) << "</td><td>" << f.rpcs << "</td><td>" << f.jobs
      << "</td><td>" << fmt("%.3f", f.rpcs_per_job) << "</td></tr>";
  }
  o << "</table><h3>Deadlines per project</h3><table id='deadlines'><tr><th>project</th>"
       "<th>resource share</th><th>share of FLOPs</th><th>met</th><th>missed</th></tr>";
  for (const auto& p : r.fig.projects)
    o << "<tr><th>" << escape(p.name) << "</th><td>" << fmt("%.3f", p.target_share) << "</td><td>"
      << fmt("%.3f", p.flops_share) << "</td><td>" << p.deadlines_met << "</td><td>"
      << p.deadlines_missed << "</td></tr>";
  o << "</table><h2>Timeline of the first host, per device instance</h2>" << timeline_svg(r);
  for (int i = 0; i < R; ++i)
    if (r.fig.rsc[static_cast<std::size_t>(i)].present) {
      o << "<h2>Share of " << resource_name(i)
        << " per project over time (solid) against its resource share among the projects "
           "with an app for it (dashed), all hosts</h2>"
        << share_svg(r, i);
    }
  o << "<h2>Overall long-term debt of the first host (hours of CPU-equivalent time)</h2>"
    << debt_svg(r);
  // A check the page makes of itself once drawn (the report test reads it with --dump-dom).
  o << "<pre id='svg-check'></pre><script>"
       "(function(){var out=[];var svgs=document.querySelectorAll('svg.chart');"
       "for(var i=0;i<svgs.length;i++){var s=svgs[i];var b=s.getBBox();"
       "var shapes=s.querySelectorAll('rect,polyline').length;var drawn=0;"
       "s.querySelectorAll('rect,polyline').forEach(function(e){var bb=e.getBBox();"
       "if(bb.width>0&&(bb.height>0||e.tagName=='polyline'))drawn++;});"
       "out.push(s.id+' '+Math.round(b.width)+'x'+Math.round(b.height)+' shapes='+shapes+"
       "' drawn='+drawn);}"
       "document.getElementById('svg-check').textContent='charts='+svgs.length+'\\n'+"
       "out.join('\\n');})();</script></body></html>\n";
  return o.str();
}

} // namespace cobble::sim
