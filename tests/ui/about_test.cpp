// SPDX-License-Identifier: GPL-3.0-or-later
// Help > About names the version (the CMake project's, as --version prints it) and the licence,
// and the application icon the windows use is there in every size the package installs.
#include <gtest/gtest.h>

#include <QAction>
#include <QIcon>
#include <QImage>
#include <QMessageBox>
#include <QTimer>

#include "ui/app/main_window.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

TEST(About, NamesTheVersion) {
  MainWindow window;
  auto* about = window.findChild<QAction*>("aboutAction");
  ASSERT_NE(about, nullptr);
  QString text;
  QTimer::singleShot(0, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      text = box->text();
      box->close();
    }
  });
  about->trigger();
  EXPECT_TRUE(text.contains(QStringLiteral("NN Studio " NNS_VERSION))) << text.toStdString();
  EXPECT_TRUE(text.contains(QString::fromLatin1(qVersion()))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("GNU General Public License, version 3 or later")))
      << text.toStdString();
}

TEST(About, IconHasEverySize) {
  for (int size : {16, 24, 32, 48, 64, 128, 256, 512}) {
    const QImage image(QStringLiteral(":/icons/org.nnstudio.NNStudio-%1.png").arg(size));
    ASSERT_FALSE(image.isNull()) << size;
    EXPECT_EQ(image.size(), QSize(size, size));
    // Drawn, not blank: the middle pixel is on a node of the network (white on blue).
    EXPECT_GT(image.pixelColor(size / 2, size / 2).lightness(), 180) << size;
  }
}

}  // namespace
}  // namespace nns::ui
