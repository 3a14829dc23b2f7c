"""Entry point for Streamlit Community Cloud: runs ../app.py unchanged.

Community Cloud takes the dependency file from the entry point's folder first,
so deploying with this file as the main file installs deploy/requirements.txt:
the app's requirements, with torch as a direct link to PyTorch's CPU-only wheel
(the default Linux torch wheel from PyPI pulls ~2.5 GB of CUDA libraries) and
everything else from PyPI. Local set-up and CI use the root requirements.txt and
never contact PyTorch's index.
"""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # attention_core/ and ui/ live at the repository root
runpy.run_path(str(ROOT / "app.py"), run_name="__main__")
