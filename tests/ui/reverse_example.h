// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The reverse transformer example (resources/examples/reverse_transformer.nns) open in a
// window of 1600 x 1000, with a probe on its first TransformerEncoderLayer (encoder.0, every
// 5th step sampled) selected and the Probe tab showing: what the sequence tests and the
// attention screenshot start from.
#include <gtest/gtest.h>

#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/probes/probe_panel.h"
#include "ui_test_support.h"

namespace nns::ui::test {

// The probed layer's node id; a test failure (and 0) when the example cannot be opened.
inline graph::NodeId openReverseWithProbedLayer(MainWindow& window) {
  const QString path = QString(NNS_SOURCE_DIR) + "/resources/examples/reverse_transformer.nns";
  if (!window.openFile(path)) {
    ADD_FAILURE() << "cannot open " << path.toStdString();
    return 0;
  }
  ProjectDocument* doc = window.document();
  graph::NodeId layer = 0;
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (n.type == "TransformerEncoderLayer" && layer == 0) layer = n.id;
  }
  if (!doc->addProbe(layer, graph::ProbeSpec{.every = 5, .max_overhead = 0})) {
    ADD_FAILURE() << "cannot probe the first TransformerEncoderLayer";
    return 0;
  }
  doc->setSelection({layer});
  window.inspector()->setCurrentWidget(window.probePanel());
  window.resize(1600, 1000);
  window.show();
  settle();
  return layer;
}

}  // namespace nns::ui::test
