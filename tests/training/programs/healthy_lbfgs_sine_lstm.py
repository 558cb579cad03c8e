"""pytorch/examples' time_sequence_prediction scaled down (_sine_lbfgs.py): two LSTMCells learn
sine waves with LBFGS at the example's learning rate 0.8, no line search, 3 optimizer steps of
20 closure evaluations each.

Healthy, as LBFGS really trains: the loss falls from 0.48 to 5e-4 within the 60 evaluations,
not monotonically (without a line search one evaluation of the first step jumps to 5e3 and the
next ones come back: LBFGS's own trial steps), and the test loss follows.

Expected: no rule fires. LossNotDecreasing judges the evaluations as one series in (step,
evaluation) order (the closure record in the index); its window medians ignore the one-evaluation
jump.

Measured with plain PyTorch: every step runs 20 evaluations, the last one of the last step is
below 1 % of the first one's, and the last test loss below 1 % of the first training loss
(test_programs_plain.py).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sine_lbfgs import train  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    train(args.out, args.steps, lr=0.8)


if __name__ == "__main__":
    main()
