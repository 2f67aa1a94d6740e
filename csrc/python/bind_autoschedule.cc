// auto_schedule and its configuration space (API.md section 8).
#include <pybind11/stl.h>

#include "autoschedule/auto_schedule.h"
#include "codegen/target.h"
#include "python/bindings.h"
#include "support/error.h"

namespace ptb::python {

namespace {

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

// {stage: {"rule": str (ignored), knob: int, ...}} -> Config; TypeError naming what is wrong.
autoschedule::Config to_config(py::handle obj) {
  if (!py::isinstance<py::dict>(obj)) {
    type_error(
        "auto_schedule() config must be a dict {stage: {knob: int}} (as "
        "auto_schedule_space() returns), found ",
        type_name(obj));
  }
  autoschedule::Config config;
  for (auto [stage, knobs] : obj.cast<py::dict>()) {
    if (!py::isinstance<py::str>(stage)) {
      type_error("auto_schedule() config keys must be stage names (str), found ", type_name(stage));
    }
    std::string name = stage.cast<std::string>();
    if (!py::isinstance<py::dict>(knobs)) {
      type_error("auto_schedule() config['", name, "'] must be a dict {knob: int}, found ",
                 type_name(knobs));
    }
    autoschedule::StageChoice& choice = config[name];
    for (auto [knob, value] : knobs.cast<py::dict>()) {
      if (!py::isinstance<py::str>(knob)) {
        type_error("auto_schedule() config['", name, "'] keys must be knob names (str), found ",
                   type_name(knob));
      }
      std::string k = knob.cast<std::string>();
      if (k == "rule") continue;  // informative only: the rules decide which one applies
      if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
        type_error("auto_schedule() config['", name, "']['", k, "'] must be an int, found ",
                   type_name(value));
      }
      choice.knobs[k] = value.cast<int64_t>();
    }
  }
  return config;
}

py::dict from_config(const autoschedule::Config& config) {
  py::dict out;
  for (const auto& [stage, choice] : config) {
    py::dict d;
    d["rule"] = choice.rule;
    for (const auto& [knob, value] : choice.knobs) d[py::str(knob)] = value;
    out[py::str(stage)] = d;
  }
  return out;
}

py::dict from_space(const autoschedule::Space& space) {
  py::dict out;
  for (const auto& [stage, knobs] : space) {
    py::dict d;
    for (const auto& [knob, values] : knobs) d[py::str(knob)] = py::list(py::cast(values));
    out[py::str(stage)] = d;
  }
  return out;
}

}  // namespace

void bind_autoschedule(py::module_& m) {
  m.def(
      "auto_schedule",
      [](const Schedule& sch, const std::string& target, py::handle config) {
        Target t = Target::parse(target);
        autoschedule::Config given;
        if (!config.is_none()) given = to_config(config);
        autoschedule::Result r =
            autoschedule::auto_schedule(sch, t, config.is_none() ? nullptr : &given);
        return py::make_tuple(from_config(r.config), from_space(r.space));
      },
      py::arg("schedule"), py::arg("target") = "llvm", py::arg("config") = py::none(),
      "Schedules `schedule` in place; returns (the configuration applied, the knob space).");
}

}  // namespace ptb::python
