"""pytorch/examples' time_sequence_prediction scaled down (_sine_lbfgs.py) with LBFGS at learning
rate 5 and no line search (the example's optimizer with a learning rate 6 times too high).

Planted problem: the loss blows up within the closure evaluations of the first optimizer step:
0.48, 0.45, 0.5, 1, 5, 16, 1.7e3, 2.8e4, ... 2e22 at the 20th evaluation, and on through the
next step (float64: it stays finite, so no NaN or inf reaches ExplodingTensor). Each step saves
MSELoss_output_0 ... MSELoss_output_19, names that do not say they are one loss in a row: seen
as 20 series of one value a step, nothing fired.

Expected rule: LossNotDecreasing (diverged: the median of the first window of 10 closure
evaluations is more than 10 times the initial level, with the cause: LBFGS's learning rate too
high / no line search) at step 0, where the evaluations blew up.

Measured with plain PyTorch: the losses stay finite; the 10th evaluation of the first step is
more than 1000 times the first (test_programs_plain.py).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sine_lbfgs import train  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    train(args.out, args.steps, lr=5.0)


if __name__ == "__main__":
    main()
