// Which frame of a Python stack is the program's own (model/python_stack.h): a kernel
// launched through PyTorch, Triton or a helper package is named by the user's line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/python_stack.h"

namespace {

using colabtrace::analyzer::IsProgramFrame;
using colabtrace::analyzer::ProgramFrame;

TEST(PythonFrames, InstalledPackagesTheStandardLibraryAndFilelessCodeAreNotTheProgramsOwn) {
  for (const char* f : {
           "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py:1501 in _call_impl",
           "/usr/lib/python3/dist-packages/torch/functional.py:12 in f",
           "/content/venv/lib/python3.12/site-packages/triton/runtime/jit.py:700 in run",
           "/usr/lib/python3.11/threading.py:975 in run",
           "/root/.pyenv/versions/3.13.0/lib/python3.13/runpy.py:88 in _run_code",
           "/opt/conda/lib64/python3.10/concurrent/futures/thread.py:58 in run",
           "<frozen runpy>:88 in _run_code",
           "<string>:3 in launcher",
       }) {
    EXPECT_FALSE(IsProgramFrame(f)) << f;
  }
  for (const char* f : {
           "/content/train.py:25 in main",
           "train.py:9 in launch",
           "/home/me/python3.11/notes.py:1 in <module>",      // not a lib/pythonX.Y directory
           "/srv/lib/python-tools/run.py:4 in go",             // no version after "python"
           "/work/mylib/lib/python3.12x/kernels.py:2 in k",    // not a version directory
           "/data/my site-packages notes/a.py:1 in f",         // no "/site-packages/" component
       }) {
    EXPECT_TRUE(IsProgramFrame(f)) << f;
  }
  EXPECT_FALSE(IsProgramFrame(""));
}

TEST(PythonFrames, TheProgramFrameIsTheInnermostOwnFrameElseTheInnermost) {
  const std::vector<std::string> triton = {
      "/venv/lib/python3.12/site-packages/triton/runtime/jit.py:700 in run",
      "/venv/lib/python3.12/site-packages/triton/runtime/jit.py:345 in <lambda>",
      "/content/model.py:40 in forward", "/content/train.py:12 in <module>"};
  EXPECT_EQ(ProgramFrame(triton), "/content/model.py:40 in forward");
  const std::vector<std::string> helper = {"train.py:9 in launch", "train.py:20 in step"};
  EXPECT_EQ(ProgramFrame(helper), "train.py:9 in launch");
  const std::vector<std::string> library_only = {"/usr/lib/python3.11/threading.py:975 in run",
                                                 "<frozen runpy>:88 in _run_code"};
  EXPECT_EQ(ProgramFrame(library_only), "/usr/lib/python3.11/threading.py:975 in run");
  EXPECT_EQ(ProgramFrame({}), "");
}

}  // namespace
