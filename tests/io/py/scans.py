"""os.walk and glob over DIR; prints what they saw."""
import glob
import json
import os
import sys

root = sys.argv[1]
walked = {d: len(fs) + len(ds) for d, ds, fs in os.walk(root)}
matches = glob.glob(os.path.join(root, "*", "*.bin"))
print(json.dumps({"walked": walked, "glob": len(matches)}))
